// Sample static initializers written for treeagent (original content, MIT).
// The benchmark reads them with tree-sitter and json5; nothing here is executed.
'use strict';

const rivers = [
  { name: 'Danube', lengthKm: 2850, mouth: 'Black Sea', countries: 10 },
  { name: 'Rhine', lengthKm: 1233, mouth: 'North Sea', countries: 6 },
  { name: 'Loire', lengthKm: 1006, mouth: 'Bay of Biscay', countries: 1 },
  { name: 'Vistula', lengthKm: 1047, mouth: 'Baltic Sea', countries: 1 },
  { name: 'Ebro', lengthKm: 930, mouth: 'Mediterranean Sea', countries: 1 },
];

const keyboardShortcuts = {
  saveDocument: { keys: 'Ctrl+S', scope: 'editor', since: '1.0' },
  findInFiles: { keys: 'Ctrl+Shift+F', scope: 'workspace', since: '1.2' },
  toggleSidebar: { keys: 'Ctrl+B', scope: 'window', since: '1.4' },
  reopenClosedTab: { keys: 'Ctrl+Shift+T', scope: 'window', since: '2.1' },
};

export const renderDefaults = {
  lineHeight: 1.45,
  tabWidth: 4,
  wrapColumn: 88,
  theme: "paper-light",
  showWhitespace: false,
};

exports.siUnits = [
  { symbol: 'Pa', quantity: 'pressure', base: false },
  { symbol: 'kg', quantity: 'mass', base: true },
  { symbol: 'mol', quantity: 'amount of substance', base: true },
  { symbol: 'lx', quantity: 'illuminance', base: false },
];

// Not static: rejected (a call inside the initializer).
const startedAt = { time: Date.now(), zone: 'UTC' };
