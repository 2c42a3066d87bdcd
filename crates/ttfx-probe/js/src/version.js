// The names the front shares with ttfx-core (src/front.rs checks them): the JS cannot
// import them.

export const VERSION = "0.1.0";
// ttfx_core::report::SCHEMA_VERSION, for the fault report built here (run.js).
export const SCHEMA_VERSION = 1;
export const version = () => VERSION;
