func square(_ x: Double) -> Double {
    return x * x
}
