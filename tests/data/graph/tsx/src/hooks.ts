import { useState } from "react";

export function useCounter(start: number) {
  const [count, setCount] = useState(start);
  return { count, increment: () => setCount(clamp(count + 1)) };
}

function clamp(n: number): number {
  return Math.min(n, 100);
}
