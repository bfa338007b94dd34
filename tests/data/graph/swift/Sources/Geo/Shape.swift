import Foundation

public protocol Shape {
    func area() -> Double
}

open class Base {
    public func name() -> String {
        return "base"
    }
}

public final class Circle: Base, Shape {
    let r: Double

    public init(r: Double) {
        self.r = r
    }

    public func area() -> Double {
        return Double.pi * square(r)
    }

    public func describe() -> String {
        return "\(name()) \(self.area())"
    }

    public static func unit() -> Circle {
        return Circle(r: 1.0)
    }
}
