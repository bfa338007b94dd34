# frozen_string_literal: true

require 'set'
require_relative 'util'

# Shapes and their areas.
module Shapes
  UNIT = 1.0

  # Anything with a name.
  module Named
    def describe
      "#{name}: #{area}"
    end
  end

  # A round shape.
  class Circle < Base
    include Named
    include Comparable

    attr_reader :r

    def initialize(r)
      super('circle')
      @r = r
    end

    def area
      Math::PI * Util.square(@r)
    end

    def <=>(other)
      area <=> other.area
    end

    def self.unit
      new(1)
    end
  end
end
