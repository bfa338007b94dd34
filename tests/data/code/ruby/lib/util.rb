module Util
  def self.square(x)
    x * x
  end

  def self.total(shapes)
    shapes.sum(&:area)
  end
end
