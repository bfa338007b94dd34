export function square(x: number): number {
  return x * x;
}

export const cube = (x: number): number => x * square(x);

export namespace Geometry {
  export function distance(a: Point, b: Point): number {
    return Math.hypot(a.x - b.x, a.y - b.y);
  }
}

interface Point {
  x: number;
  y: number;
}

export interface Comparable<T> {
  compareTo(other: T): number;
}
