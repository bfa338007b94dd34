package com.acme.shapes;

public abstract class Base implements Shape {
    protected String name() {
        return "base";
    }
}
