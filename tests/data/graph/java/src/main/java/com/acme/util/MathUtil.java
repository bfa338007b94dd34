package com.acme.util;

public final class MathUtil {
    public static double square(double x) {
        return x * x;
    }
}
