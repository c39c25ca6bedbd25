// the rule lives with the other input checks (input/json-value.ts), shared with payloads at enqueue
export { recordedJson } from '../input/json-value.js';
