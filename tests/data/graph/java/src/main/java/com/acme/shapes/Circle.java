package com.acme.shapes;

import com.acme.util.MathUtil;

public class Circle extends Base {
    private final double r;

    public Circle(double r) {
        this.r = r;
    }

    @Override
    public double area() {
        return Math.PI * MathUtil.square(r);
    }

    public static Circle unit() {
        return new Circle(1.0);
    }

    public String label() {
        return name() + describe();
    }
}
