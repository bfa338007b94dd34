import React from "react";
import { useCounter } from "./hooks";
import { Button } from "./Button";

export function App(): JSX.Element {
  const { count, increment } = useCounter(0);
  return <Button label={String(count)} onClick={increment} />;
}
