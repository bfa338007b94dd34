module Util
  def self.square(x)
    x * x
  end
end
