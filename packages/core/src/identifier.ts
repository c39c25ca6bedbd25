// The check lives with the other input checks; this path stays for the modules that import it.
export { validateIdentifier } from './input/identifier.js';
