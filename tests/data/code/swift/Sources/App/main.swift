import Shapes

let circles = [Circle(r: 2), Circle.unit()]
let total = circles.map { $0.area() }.reduce(0, +)
print(total, circles.sorted().first?.description ?? "")
