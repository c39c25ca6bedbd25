import { formatCount } from './format.js';
import { h, type Html } from './html.js';

const WIDTH = 600;
const HEIGHT = 120;

/**
 * Finished rows per minute over the last hour as an SVG bar chart, server-rendered: no chart
 * script, nothing for the CSP to allow. Screen readers get the title and a one-line summary.
 */
export function throughputChart(id: string, title: string, perMinute: readonly number[]): Html {
  const max = Math.max(1, ...perMinute);
  const total = perMinute.reduce((s, n) => s + n, 0);
  const peak = Math.max(0, ...perMinute);
  const step = WIDTH / Math.max(1, perMinute.length);
  const bars = perMinute.map((n, i) => {
    const height = n === 0 ? 0 : Math.max(1, Math.round((n / max) * (HEIGHT - 4)));
    const ago = perMinute.length - i;
    return h`<rect x="${(i * step + 1).toFixed(1)}" y="${HEIGHT - height}" width="${Math.max(1, step - 2).toFixed(1)}" height="${height}"><title>${formatCount(n)} finished ${ago} min ago</title></rect>`;
  });
  return h`<figure class="chart">
<svg role="img" aria-labelledby="${id}-t ${id}-d" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="none">
<title id="${id}-t">${title}</title>
<desc id="${id}-d">${formatCount(total)} in the last hour, at most ${formatCount(peak)} in one minute.</desc>
<line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"></line>
${bars}
</svg>
<figcaption><span>${perMinute.length} min ago</span><span>${title}: ${formatCount(total)} · peak ${formatCount(peak)}/min</span><span>now</span></figcaption>
</figure>`;
}

/** A small line of the same numbers beside a queue's row; decorative (the row states the total). */
export function sparkline(perMinute: readonly number[]): Html {
  const max = Math.max(1, ...perMinute);
  const w = 120;
  const hgt = 24;
  const step = w / Math.max(1, perMinute.length - 1);
  const points = perMinute.map((n, i) => `${(i * step).toFixed(1)},${(hgt - 1 - (n / max) * (hgt - 2)).toFixed(1)}`).join(' ');
  return h`<svg class="spark" aria-hidden="true" viewBox="0 0 ${w} ${hgt}" width="${w}" height="${hgt}"><polyline points="${points}"></polyline></svg>`;
}
