export function square(x: number): number {
  return x * x;
}

export function cube(x: number): number {
  return x * square(x);
}
