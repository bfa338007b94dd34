package shapes;

/** Anything with an area. */
public interface Shape extends Named {
    double UNIT = 1.0;

    double area();

    default String describe() {
        return name() + ": " + area();
    }
}
