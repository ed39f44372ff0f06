// Renders the service's own document (relative, so a path prefix works).
window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  deepLinking: true,
  tryItOutEnabled: false,
});
