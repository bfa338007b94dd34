export interface Shape {
  area(): number;
  name(): string;
}

export abstract class Base implements Shape {
  abstract area(): number;

  name(): string {
    return "base";
  }

  describe(): string {
    return `${this.name()} ${this.area()}`;
  }
}
