package shapes;

import java.util.*;

public final class Main {
    private Main() {}

    public static void main(String[] args) {
        List<Circle> circles = Circle.many(3);
        double total = 0;
        for (Shape s : circles) {
            total += s.area();
        }
        System.out.println(total);
        Runnable r = () -> System.out.println(circles.get(0).describe());
        r.run();
    }
}
