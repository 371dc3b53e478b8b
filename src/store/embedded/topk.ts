// Keeps the k smallest items seen under a comparator, in O(k) memory: a sorted query with a limit
// over a scan holds skip+limit documents, never the whole collection.

export class TopK<T> {
  // A max-heap: the worst kept item sits at the root, ready to be evicted.
  private readonly heap: T[] = [];

  constructor(
    private readonly k: number,
    private readonly cmp: (a: T, b: T) => number,
  ) {}

  push(item: T): void {
    if (this.k <= 0) return;
    if (this.heap.length < this.k) {
      this.heap.push(item);
      this.siftUp(this.heap.length - 1);
    } else if (this.cmp(item, this.heap[0]!) < 0) {
      this.heap[0] = item;
      this.siftDown(0);
    }
  }

  /** The kept items, best first. */
  sorted(): T[] {
    return [...this.heap].sort(this.cmp);
  }

  private siftUp(i: number): void {
    const { heap, cmp } = this;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (cmp(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const { heap, cmp } = this;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let largest = i;
      if (left < heap.length && cmp(heap[left]!, heap[largest]!) > 0) largest = left;
      if (right < heap.length && cmp(heap[right]!, heap[largest]!) > 0) largest = right;
      if (largest === i) return;
      [heap[i], heap[largest]] = [heap[largest]!, heap[i]!];
      i = largest;
    }
  }
}
