/** The sentence an operator reads for an error; plain text, so it is defined with the errors (src/errors.ts). */
export { errorText } from '../errors.ts';
