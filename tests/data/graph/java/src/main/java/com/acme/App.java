package com.acme;

import com.acme.shapes.Circle;
import java.util.List;

public class App {
    public static void main(String[] args) {
        List<Circle> all = List.of(Circle.unit(), new Circle(2));
        System.out.println(all.get(0).label());
    }
}
