#pragma once

#include <string>
#include <vector>

namespace geo {

constexpr double kPi = 3.14159;

/// Anything with an area.
class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    std::string describe() const;
};

/// A round shape.
class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override;
    static Circle unit();

private:
    double r_;
};

template <typename T>
T square(T x) {
    return x * x;
}

using Shapes = std::vector<Shape*>;

}  // namespace geo
