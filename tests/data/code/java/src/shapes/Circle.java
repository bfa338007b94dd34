package shapes;

import java.util.ArrayList;
import java.util.List;
import static java.lang.Math.PI;

/**
 * A round shape.
 */
public class Circle extends AbstractShape implements Shape, Comparable<Circle> {
    public static final double MAX_RADIUS = 1e6;
    private final double r;

    public Circle(double r) {
        super("circle");
        this.r = r;
    }

    @Override
    public double area() {
        return PI * Util.square(r);
    }

    @Override
    public int compareTo(Circle other) {
        return Double.compare(area(), other.area());
    }

    public static List<Circle> many(int n) {
        List<Circle> out = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            out.add(new Circle(i));
        }
        return out;
    }

    enum Kind { SMALL, LARGE }
}
