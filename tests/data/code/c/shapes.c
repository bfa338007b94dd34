#include <stdlib.h>
#include <math.h>
#include "shapes.h"

struct circle {
    shape_t base;
    double r;
};

static double square(double x) { return x * x; }

/* The area of a circle. */
static double circle_area(const shape_t *self)
{
    const struct circle *c = (const struct circle *)self;
    return M_PI * square(c->r);
}

shape_t *make_circle(double r)
{
    struct circle *c = malloc(sizeof *c);
    c->base.name = "circle";
    c->base.area = circle_area;
    c->r = r;
    return &c->base;
}

double total_area(shape_t **shapes, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += shapes[i]->area(shapes[i]);
    return sum;
}
