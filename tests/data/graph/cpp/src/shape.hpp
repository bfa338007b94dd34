#pragma once
#include <string>

namespace geo {

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    std::string describe() const;
};

class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override;
    static Circle unit();

private:
    double r_;
};

double square(double x);

}  // namespace geo
