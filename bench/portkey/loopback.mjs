// Preloaded into the Portkey gateway for the benchmark (node --import ./loopback.mjs): its
// start-server binds every interface and takes no host option, so pin listen() to 127.0.0.1.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number') return listen.call(this, { port: args[0], host: '127.0.0.1' }, ...args.slice(1).filter((a) => typeof a === 'function'));
  if (args[0] && typeof args[0] === 'object' && !('path' in args[0])) args[0] = { ...args[0], host: '127.0.0.1' };
  return listen.apply(this, args);
};
