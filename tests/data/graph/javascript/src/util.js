export function square(x) {
  return x * x;
}

export default class Registry {
  constructor() {
    this.items = [];
  }

  add(item) {
    this.items.push(item);
    return this;
  }
}
