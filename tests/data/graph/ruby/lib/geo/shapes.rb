require_relative "util"

module Geo
  class Shape
    def describe
      "#{name}: #{area}"
    end

    def name
      self.class.name.downcase
    end
  end

  class Circle < Shape
    def initialize(r)
      @r = r
    end

    def area
      Util.square(@r) * Math::PI
    end

    def self.unit
      new(1.0)
    end
  end
end
