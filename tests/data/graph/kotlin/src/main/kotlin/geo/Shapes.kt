package geo

import geo.util.square

interface Shape {
    fun area(): Double

    fun describe(): String = "area ${area()}"
}

open class Base : Shape {
    override fun area(): Double = 0.0
}

class Circle(private val r: Double) : Base() {
    override fun area(): Double = Math.PI * square(r)
}

fun unitCircle(): Circle = Circle(1.0)
