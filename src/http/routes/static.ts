import type { FastifyInstance } from 'fastify'

// The reference proxy's robots.txt (behaviour.md R1 "Home page and special paths").
const ROBOTS = 'User-agent: *\nCrawl-delay: 1\nRequest-rate: 1/1\n'
const FAVICON = buildFavicon()

/** `/robots.txt` and `/favicon.ico`: answered locally, never sent upstream as handles. */
export default async function staticRoutes(app: FastifyInstance): Promise<void> {
  app.get('/robots.txt', async (_request, reply) => {
    return reply.type('text/plain; charset=utf-8').header('cache-control', 'public, max-age=86400').send(ROBOTS)
  })
  app.get('/favicon.ico', async (_request, reply) => {
    return reply.type('image/x-icon').header('cache-control', 'public, max-age=604800').send(FAVICON)
  })
}

/** A 16×16 ICO (one 32-bit BMP image): a blue disc on a transparent ground, made once at start. */
function buildFavicon(): Buffer {
  const size = 16
  const pixels = Buffer.alloc(size * size * 4)
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const dx = x - 7.5
      const dy = y - 7.5
      const inside = dx * dx + dy * dy <= 56
      // BMP rows run bottom-up, pixels are BGRA.
      const o = ((size - 1 - y) * size + x) * 4
      pixels.set(inside ? [0xb0, 0x5a, 0x1f, 0xff] : [0, 0, 0, 0], o)
    }
  }
  const mask = Buffer.alloc(size * 4) // AND mask: all zero, alpha does the work
  const bmpHeader = Buffer.alloc(40)
  bmpHeader.writeUInt32LE(40, 0)
  bmpHeader.writeInt32LE(size, 4)
  bmpHeader.writeInt32LE(size * 2, 8) // XOR + AND heights
  bmpHeader.writeUInt16LE(1, 12)
  bmpHeader.writeUInt16LE(32, 14)
  bmpHeader.writeUInt32LE(pixels.length + mask.length, 20)
  const image = Buffer.concat([bmpHeader, pixels, mask])
  const header = Buffer.alloc(6 + 16)
  header.writeUInt16LE(0, 0)
  header.writeUInt16LE(1, 2) // icon
  header.writeUInt16LE(1, 4) // one image
  header.writeUInt8(size, 6)
  header.writeUInt8(size, 7)
  header.writeUInt16LE(1, 10)
  header.writeUInt16LE(32, 12)
  header.writeUInt32LE(image.length, 14)
  header.writeUInt32LE(header.length, 18)
  return Buffer.concat([header, image])
}
