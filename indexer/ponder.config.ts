export { default } from "../ponder.config.ts";
