#include "shape.hpp"

#include <sstream>

namespace geo {

double square(double x) { return x * x; }

std::string Shape::describe() const {
    std::ostringstream out;
    out << area();
    return out.str();
}

Circle::Circle(double r) : r_(r) {}

double Circle::area() const { return 3.14159 * square(r_); }

Circle Circle::unit() { return Circle(1.0); }

}  // namespace geo
