# Gateway and consumer image (one image, ROLE picks the side). It needs auth configuration to
# start (NODE_ENV=production refuses to run without it): AUTH_JWT_SECRET or AUTH_JWT_SECRET_FILE,
# AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_OIDC_ISSUER; the compose file passes AUTH_JWT_SECRET in.
# NODE_IMAGE picks the Node.js base (scripts/containers-setup.sh builds one where no registry
# is reachable); the default is the official image.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY schemas ./schemas
COPY src ./src
COPY client ./client
COPY consumers ./consumers
# The TypeScript ones only (mint-token and the generators): a changed shell script does not
# invalidate the build.
COPY scripts/*.ts ./scripts/
# One install: the build's dependencies, less the dev ones, are what the runtime stage copies.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Files stay root's and read-only to the process; it runs as the image's unprivileged user.
USER node
EXPOSE 8080
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
