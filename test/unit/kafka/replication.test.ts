import { expect } from 'chai';
import type { Admin } from 'kafkajs';
import { replicationFor, replicationShortfalls } from '../../../src/kafka/replication.js';

const unset = { replicationFactor: undefined, minInsyncReplicas: undefined };

describe('replicationFor', () => {
  it('asks for 3 copies and 2 in sync on three brokers or more, and 1/1 on one broker', () => {
    expect(replicationFor(unset, 1)).to.deep.equal({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(replicationFor(unset, 2)).to.deep.equal({ replicationFactor: 2, minInsyncReplicas: 1 });
    expect(replicationFor(unset, 3)).to.deep.equal({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(replicationFor(unset, 7)).to.deep.equal({ replicationFactor: 3, minInsyncReplicas: 2 });
  });

  it('takes configured values as they are, and derives only what is unset', () => {
    expect(replicationFor({ replicationFactor: 5, minInsyncReplicas: 3 }, 1)).to.deep.equal({ replicationFactor: 5, minInsyncReplicas: 3 });
    expect(replicationFor({ replicationFactor: 1, minInsyncReplicas: undefined }, 3)).to.deep.equal({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(replicationFor({ replicationFactor: undefined, minInsyncReplicas: 1 }, 3)).to.deep.equal({ replicationFactor: 3, minInsyncReplicas: 1 });
  });

  it('refuses a min ISR above the replication factor it arrives at', () => {
    expect(() => replicationFor({ replicationFactor: undefined, minInsyncReplicas: 2 }, 1)).to.throw(/KAFKA_MIN_INSYNC_REPLICAS \(2\) exceeds the replication factor \(1\)/);
  });
});

describe('replicationShortfalls', () => {
  // Just the two admin calls it makes, answering as a cluster would.
  function admin(topics: Record<string, { replicas: number[]; minIsr: string }>): Admin {
    const fake: Pick<Admin, 'fetchTopicMetadata' | 'describeConfigs'> = {
      fetchTopicMetadata: async (options) => ({
        topics: (options?.topics ?? []).map((name) => ({
          name,
          partitions: [0, 1].map((partitionId) => ({
            partitionErrorCode: 0,
            partitionId,
            leader: topics[name]!.replicas[0]!,
            replicas: partitionId === 1 ? topics[name]!.replicas : [...topics[name]!.replicas, 99],
            isr: topics[name]!.replicas,
            offlineReplicas: [],
          })),
        })),
      }),
      describeConfigs: async (options) => ({
        throttleTime: 0,
        resources: options.resources.map((r) => ({
          errorCode: 0,
          errorMessage: '',
          resourceName: r.name,
          resourceType: r.type,
          configEntries: [
            { configName: 'min.insync.replicas', configValue: topics[r.name]!.minIsr, isDefault: false, configSource: 1, isSensitive: false, readOnly: false, configSynonyms: [] },
          ],
        })),
      }),
    };
    return fake as Admin;
  }

  it('names the topics with fewer replicas (on any partition) or a lower min ISR than wanted', async () => {
    const found = await replicationShortfalls(
      admin({ good: { replicas: [1, 2, 3], minIsr: '2' }, thin: { replicas: [1], minIsr: '2' }, lax: { replicas: [1, 2, 3], minIsr: '1' } }),
      ['good', 'thin', 'lax', 'good'],
      { replicationFactor: 3, minInsyncReplicas: 2 },
    );
    expect(found).to.deep.equal([
      { topic: 'thin', replicas: 1, minInsyncReplicas: 2 },
      { topic: 'lax', replicas: 3, minInsyncReplicas: 1 },
    ]);
  });
});
