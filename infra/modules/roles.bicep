// One data-plane role for the Function app's identity, scoped to one entity: Data Receiver on a
// task's source, Data Sender on its targets. Never namespace-wide, never Owner, never keys.
@description('namespace, entityType (queue | topic | eventhub), entity, role, roleDefinitionId.')
param assignment object

@description('Object id of the Function app managed identity.')
param principalId string

var roleDefinitionId = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', assignment.roleDefinitionId)

resource queue 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' existing = if (assignment.entityType == 'queue') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource topic 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' existing = if (assignment.entityType == 'topic') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource eventHub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' existing = if (assignment.entityType == 'eventhub') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource onQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'queue') {
  scope: queue
  name: guid(queue.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onTopic 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'topic') {
  scope: topic
  name: guid(topic.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onEventHub 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'eventhub') {
  scope: eventHub
  name: guid(eventHub.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
