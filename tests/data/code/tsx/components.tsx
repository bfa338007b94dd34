import React, { useState } from "react";
import { Circle } from "./shapes";
import "./styles.css";

interface Props {
  shapes: Circle[];
  onSelect?: (c: Circle) => void;
}

/** A list of shapes. */
export function ShapeList({ shapes, onSelect }: Props): JSX.Element {
  const [selected, setSelected] = useState<number>(-1);
  return (
    <ul>
      {shapes.map((s, i) => (
        <ShapeItem key={i} shape={s} active={i === selected} onClick={() => setSelected(i)} />
      ))}
    </ul>
  );
}

const ShapeItem = ({ shape, active, onClick }: ItemProps) => (
  <li className={active ? "on" : ""} onClick={onClick}>
    {shape.describe()}
  </li>
);

type ItemProps = { shape: Circle; active: boolean; onClick: () => void };

export default class Panel extends React.Component<Props> {
  render() {
    return <ShapeList {...this.props} />;
  }
}
