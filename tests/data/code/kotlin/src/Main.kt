import shapes.Circle
import shapes.util.*

fun main() {
    val circles = listOf(Circle(2.0), Circle.unit())
    circles.forEach { Registry.add(it) }
    println(circles.sumOf { it.area() })
}
