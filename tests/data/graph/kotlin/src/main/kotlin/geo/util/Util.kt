package geo.util

fun square(x: Double): Double = x * x

fun cube(x: Double): Double = x * square(x)
