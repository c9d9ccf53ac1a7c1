# frozen_string_literal: true

# The semantic cache's index interface, in plain Ruby, for the specs until the gem's
# own indexes land: an exact scan of normalised vectors per partition.
class PureIndex
  def initialize
    @partitions = Hash.new { |h, k| h[k] = [] }
    @lock = Mutex.new
  end

  # @return [nil]
  def add(partition:, vector:, value:)
    norm = Math.sqrt(vector.sum { |x| x * x })
    raise ArgumentError, "a zero vector" if norm.zero?

    @lock.synchronize { @partitions[partition] << [vector.map { |x| x / norm }, value] }
    nil
  end

  # @return [Array(String, Float), nil]
  def nearest(partition:, vector:, threshold:)
    norm = Math.sqrt(vector.sum { |x| x * x })
    return nil if norm.zero?

    query = vector.map { |x| x / norm }
    best = @lock.synchronize do
      (@partitions.fetch(partition, nil) || []).map { |v, value| [value, v.zip(query).sum { |a, b| a * b }] }
                                                .max_by { |_, s| s }
    end
    best && best[1] >= threshold ? best : nil
  end

  def clear
    @lock.synchronize { @partitions.clear }
    nil
  end

  def size
    @lock.synchronize { @partitions.sum { |_, list| list.size } }
  end
end
