open class Base {
    public let name: String

    public init(name: String) {
        self.name = name
    }
}

public struct Point: Equatable {
    var x: Double
    var y: Double
}

public enum Kind: String {
    case small
    case large
}

public typealias Shapes = [Shape]

func square(_ x: Double) -> Double {
    x * x
}
