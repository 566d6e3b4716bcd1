export type { OutboundMessage, Publisher, ReadinessCheck } from './publisher.js';
export { createRabbitMqPublisher, type RabbitMqOptions, type RabbitMqPublisher, type RabbitMqState } from './rabbitmq.js';
export { createEmbeddedPublisher, type EmbeddedOptions, type EmbeddedPublisher } from './embedded.js';
export { createNonePublisher } from './none.js';
