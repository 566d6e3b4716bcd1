import { s3Fixture } from '../../support/s3-fixture.js';
import { describeDropPipeline } from './drop-contract.js';

describeDropPipeline('s3 (s3rver)', s3Fixture, { atomicRename: false });
