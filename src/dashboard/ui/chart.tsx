// A bar chart in plain SVG: one bar per point, scaled to the largest value; labels are text, so the
// numbers are readable by screen readers through the table the page shows beside it.
export interface Point {
  label: string;
  value: number;
}

export function BarChart({ points, title, format }: { points: Point[]; title: string; format(v: number): string }) {
  const width = 720;
  const height = 180;
  const pad = 24;
  const max = Math.max(1e-9, ...points.map((p) => p.value));
  const step = points.length > 0 ? (width - pad) / points.length : 0;
  const bar = Math.max(1, step * 0.8);
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height + pad}`} role="img" aria-label={title}>
      <title>{title}</title>
      <line x1={pad} y1={height} x2={width} y2={height} class="axis" />
      <text x={0} y={12} class="tick">
        {format(max)}
      </text>
      {points.map((p, i) => {
        const h = (p.value / max) * (height - pad);
        return (
          <rect key={p.label} x={pad + i * step} y={height - h} width={bar} height={h} class="bar">
            <title>{`${p.label}: ${format(p.value)}`}</title>
          </rect>
        );
      })}
      {points.length > 0 ? (
        <>
          <text x={pad} y={height + 16} class="tick">
            {points[0]!.label}
          </text>
          <text x={width} y={height + 16} class="tick end">
            {points[points.length - 1]!.label}
          </text>
        </>
      ) : null}
    </svg>
  );
}
