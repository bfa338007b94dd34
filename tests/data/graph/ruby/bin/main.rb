require_relative "../lib/geo/shapes"
require "json"

def main
  c = Geo::Circle.new(2.0)
  puts JSON.generate({ area: c.area, unit: Geo::Circle.unit.describe })
end

main
