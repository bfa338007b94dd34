#ifndef SHAPES_H
#define SHAPES_H

#include <stddef.h>

#define MAX_SHAPES 16

/* A shape: a name and a way to compute its area. */
typedef struct shape {
    const char *name;
    double (*area)(const struct shape *self);
} shape_t;

typedef enum { CIRCLE, SQUARE } kind_t;

shape_t *make_circle(double r);
double total_area(shape_t **shapes, size_t n);

#endif
