package shapes.util

interface Named {
    fun name(): String
}

fun square(x: Double): Double = x * x

object Registry {
    private val items = mutableListOf<Any>()

    fun add(item: Any) {
        items.add(item)
    }
}
