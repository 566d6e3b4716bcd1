import { localFixture } from '../support/local-fixture.js';
import { describeDropStore } from './store-contract.js';

describeDropStore('local folder', localFixture('local-drop-'));
