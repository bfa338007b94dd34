#!/usr/bin/env ruby
require_relative '../lib/shapes'

def main(args)
  circles = args.map { |a| Shapes::Circle.new(Float(a)) }
  puts Util.total(circles)
  puts circles.max.describe
end

main(ARGV)
