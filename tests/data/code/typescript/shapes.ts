import { square } from "./util";
import type { Named } from "./named";

export const UNIT = 1;

/** Something with an area. */
export interface Shape extends Named {
  area(): number;
  describe?(): string;
}

export type ShapeId = string | number;

export enum Kind {
  Circle,
  Square,
}

export abstract class Base implements Shape {
  constructor(public readonly name: string) {}

  abstract area(): number;

  describe(): string {
    return `${this.name}: ${this.area().toFixed(2)}`;
  }
}

export class Circle extends Base implements Shape, Comparable<Circle> {
  constructor(private r: number) {
    super("circle");
  }

  area(): number {
    return Math.PI * square(this.r);
  }

  compareTo(other: Circle): number {
    return this.area() - other.area();
  }
}
