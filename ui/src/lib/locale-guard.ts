// WebKitGTK reports the POSIX locale as it is (`C`, `C.UTF-8`) when LANG is unset or C.
// Intl rejects such a tag, and uPlot builds a number formatter from navigator.language when
// it loads: the whole window would fail to start. Imported first by main.ts.
try {
  new Intl.NumberFormat(navigator.language);
} catch {
  Object.defineProperty(navigator, 'language', { get: () => 'en-US', configurable: true });
}

export {};
