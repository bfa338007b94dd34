import geo.Circle
import geo.unitCircle
import geo.util.*

fun main() {
    val shapes = listOf(Circle(2.0), unitCircle())
    println(shapes.size + cube(2.0))
}
