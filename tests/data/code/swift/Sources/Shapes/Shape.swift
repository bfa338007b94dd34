import Foundation

/// Anything with an area.
public protocol Shape: CustomStringConvertible {
    var name: String { get }
    func area() -> Double
}

extension Shape {
    public var description: String { "\(name): \(area())" }
}

/// A round shape.
public final class Circle: Base, Shape, Comparable {
    public let r: Double

    public init(r: Double) {
        self.r = r
        super.init(name: "circle")
    }

    public func area() -> Double {
        return Double.pi * square(r)
    }

    public static func unit() -> Circle {
        return Circle(r: 1)
    }

    public static func < (lhs: Circle, rhs: Circle) -> Bool {
        lhs.area() < rhs.area()
    }
}
