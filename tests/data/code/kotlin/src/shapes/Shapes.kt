package shapes

import kotlin.math.PI
import shapes.util.square as sq

const val UNIT = 1.0

/** Anything with an area. */
interface Shape : Named {
    fun area(): Double

    fun describe(): String = "${name()}: ${area()}"
}

abstract class AbstractShape(private val label: String) : Shape {
    override fun name(): String = label
}

/** A round shape. */
class Circle(val r: Double) : AbstractShape("circle"), Comparable<Circle> {
    override fun area(): Double = PI * sq(r)

    override fun compareTo(other: Circle): Int = area().compareTo(other.area())

    companion object {
        fun unit(): Circle = Circle(1.0)
    }
}

enum class Kind { SMALL, LARGE }

typealias Shapes = List<Shape>
