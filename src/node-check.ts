/**
 * Imported first by every entry of the package (the CLI imports it before anything else): on a
 * Node older than the package needs, one sentence that names the versions, instead of a
 * dependency failing in words of its own (undici 8 throws "Cannot read properties of undefined
 * (reading 'bind')" on Node 20). Keep `minimum` equal to `engines.node` in package.json.
 */
export const minimum = { major: 22, minor: 19 };

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < minimum.major || (major === minimum.major && minor < minimum.minor)) {
  throw new Error(
    `comfortable-loader needs Node.js ${minimum.major}.${minimum.minor} or newer, and this is Node.js ` +
      `${process.versions.node}: install a newer Node.js (24 LTS, say) and run it again.`,
  );
}
